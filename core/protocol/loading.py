"""Loading protocols: a built-in by name or a TOML file, every key checked; a bad file gives one line naming
the file, the key and the fix (``ProtocolError``). The format is described in ``spec.py``."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from .grids import logspace
from .rendering import NUMBER_FORMATS, PLURAL_RULES, Language, format_value
from .spec import BUILTIN_DIR, Protocol, ProtocolError, Quantity, Range, Variant, paper_sha256
MAX_RANGE_VALUES = 2000  # a cell's similarity matrix is n x n: 2,000 values are 32 MB in float64
# A whole protocol: its texts, and its cells' similarity pairs (every cell's n x n matrix is kept in results.json:
# 2,000,000 pairs are about 40 MB of JSON; the paper's protocol has 1,319 texts and 10,260 pairs).
MAX_PROTOCOL_TEXTS = 20_000
MAX_PROTOCOL_PAIRS = 2_000_000
KNOWN_KEYS = {
    "": {"protocol", "languages", "quantities", "ranges", "digits_words", "variants"},
    "protocol": {"name", "version", "description", "measures", "exams"},
    "languages": {"template", "plural", "decimal"},
    "quantities": {"name", "unit", "forms"},
    "ranges": {"name", "values", "step", "linspace", "logspace", "round", "unique", "integer", "format", "plural",
               "quantities"},
    "digits_words": {"digits", "words", "words_for", "plural"},
    "variants": {"label", "kind", "language", "template", "templates", "format", "reference"},
}

def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def builtin_protocol(name: str) -> Protocol:
    """A built-in protocol by name, whatever files the working directory holds (what fasteval loads by itself:
    the paper's protocol as the default)."""
    if name not in builtin_names():
        raise ProtocolError(f"No built-in protocol named {name!r}.", f"use one of {', '.join(builtin_names())}.")
    return _load_cached(str(BUILTIN_DIR / f"{name}.toml"))


def resolve_protocol(protocol: str | Path | Protocol | None) -> Protocol:
    """The one way a run gets its protocol: a loaded Protocol as it is; None, the paper's (built in); a name or
    a file as the user gave it (``load_protocol``)."""
    if isinstance(protocol, Protocol):
        return protocol
    return builtin_protocol("paper") if protocol is None else load_protocol(protocol)


def load_protocol(name_or_path: str | Path) -> Protocol:
    """A built-in protocol by name (``fasteval protocols``) or a protocol file; ProtocolError when unusable.
    A name that is both a built-in and a file here is refused: which one is meant is the user's to say."""
    text = str(name_or_path)
    builtin = BUILTIN_DIR / f"{text}.toml"
    path = Path(text).expanduser()
    if text in builtin_names():
        if path.is_file() and path.resolve() != builtin.resolve():
            raise ProtocolError(f"{text!r} is both a built-in protocol and the file {path.resolve()}.",
                                f"pass ./{text} for the file; rename the file to use the built-in.")
        return _load_cached(str(builtin))
    if not path.is_file():
        raise ProtocolError(f"No protocol named {text!r} and no file {path}.",
                            f"pass one of {', '.join(builtin_names())} (fasteval protocols) or a protocol .toml file.")
    return _load_cached(str(path.resolve()))


_CACHE: dict[tuple[str, str], Protocol] = {}


def _load_cached(path: str) -> Protocol:
    data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if (path, digest) not in _CACHE:
        builtin = Path(path).parent == BUILTIN_DIR
        _CACHE[(path, digest)] = parse_protocol(data, path, digest, check_units=not builtin)
    return _CACHE[(path, digest)]


def parse_protocol(data: bytes, source: str, digest: str | None = None, check_units: bool = True) -> Protocol:
    """Validate and build a Protocol from a TOML document (``source`` names it in errors). ``check_units``:
    ask pint about every unit (a built-in protocol skips it: pint costs 0.3 s of start-up, and a test checks
    the built-ins' units)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    def fail(key: str, problem: str, fix: str) -> ProtocolError:
        return ProtocolError(f"{source}: {key}: {problem}.", fix)

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as err:
        raise fail("(file)", f"not valid TOML ({err})", "fix the syntax (see the protocol files in "
                   "core/protocol/builtin/ for examples).") from None
    _check_keys(doc, "", fail)
    head, exams = _head(doc, data, digest, fail)
    languages = _languages(doc, fail)
    quantities = tuple(_quantity(q, k, languages, fail, check_units)
                       for k, q in enumerate(_list(doc, "quantities", fail)))
    ranges = tuple(_range(r, k, fail, languages, {q.name for q in quantities})
                   for k, r in enumerate(_list(doc, "ranges", fail)))
    for what, items in (("quantities", quantities), ("ranges", ranges)):
        names = [i.name for i in items]
        if len(set(names)) != len(names):
            raise fail(what, "names repeat", "give every entry its own name")
    variants = _variants(doc, languages, quantities, ranges, fail)
    _check_size(quantities, ranges, variants, fail)
    dw, digits, words, words_for = _digits_words(doc, fail)
    return Protocol(name=str(head["name"]), version=str(head["version"]),
                    description=str(head.get("description", "")), measures=str(head.get("measures", "")),
                    exams=exams, languages=languages, quantities=quantities, ranges=ranges, variants=variants,
                    digits=digits, words=words, words_for=words_for,
                    digits_words_plural=str(dw.get("plural", "never")), source=source,
                    content_sha256=digest or hashlib.sha256(data).hexdigest())


def _head(doc: dict, data: bytes, digest: str | None, fail) -> tuple[dict, tuple]:
    """``[protocol]`` and the exams it supports (a protocol file: Exam 1 only)."""
    head = doc.get("protocol")
    if not isinstance(head, dict) or not head.get("name") or not head.get("version"):
        raise fail("protocol", "missing name or version", 'add [protocol] with name = "..." and version = "..."')
    _check_keys(head, "protocol", fail)
    raw = head.get("exams", [1])
    exams = tuple(int(e) if isinstance(e, str) and e.strip().isdigit() else e
                  for e in (raw if isinstance(raw, list) else [raw]))
    the_paper = head["name"] == "paper" and (digest or hashlib.sha256(data).hexdigest()) == paper_sha256()
    if not the_paper and exams != (1,):
        raise fail("protocol.exams", f"{list(exams)!r}: only exam 1 runs on a protocol file (exams 2, 3 and "
                   "conversion have the paper's own rules)", "set exams = [1]")
    return head, exams


def _languages(doc: dict, fail) -> dict[str, Language]:
    languages = {}
    for code, spec in (doc.get("languages") or {"en": {}}).items():
        _check_keys(spec, "languages", fail, f"languages.{code}")
        lang = Language(code, spec.get("template", "{number} {unit}"), spec.get("plural", "one"),
                        spec.get("decimal", "."))
        if "{number}" not in lang.template:
            raise fail(f"languages.{code}.template", f"{lang.template!r} has no {{number}}",
                       'write the number\'s place as {number}, e.g. "{number} {unit}"')
        if lang.plural not in PLURAL_RULES or lang.decimal not in (".", ","):
            raise fail(f"languages.{code}", "unknown plural rule or decimal mark",
                       f"use plural = one of {', '.join(PLURAL_RULES)} and decimal = \".\" or \",\"")
        languages[code] = lang
    return languages


def _variants(doc: dict, languages: dict, quantities: tuple, ranges: tuple, fail) -> tuple[Variant, ...]:
    """The ``[[variants]]`` (one unlabelled variant when there are none), each able to render every range."""
    variants = tuple(_variant(v, k, languages, quantities, fail) for k, v in enumerate(doc.get("variants") or []))
    if not variants:
        variants = (Variant(None, language=next(iter(languages))),)
    elif len({v.label for v in variants}) != len(variants) or sum(v.reference for v in variants) > 1:
        raise fail("variants", "labels repeat or more than one is the reference",
                   "give every variant its own label and mark at most one reference = true")
    for v in variants:
        missing = [q.name for q in quantities if v.language not in q.forms]
        if missing:
            raise fail(f"quantities.{missing[0]}.forms", f"no unit forms for language {v.language!r}",
                       f"add forms.{v.language} = [singular, plural]")
        fmt = v.number_format or ""
        for r in ranges:
            try:
                format_value(r.values[0], fmt or r.number_format, languages[v.language])
                [format_value(x, fmt or r.number_format, languages[v.language]) for x in r.values]
            except ValueError as err:
                raise fail(f"variants.{v.label}.format", f"{fmt or r.number_format!r} cannot render range "
                           f"{r.name} ({err})", "choose another format or range") from None
    return variants


def _check_size(quantities: tuple, ranges: tuple, variants: tuple, fail) -> None:
    """The whole protocol within MAX_PROTOCOL_TEXTS and MAX_PROTOCOL_PAIRS."""
    n_cells = [len(r.values) for q in quantities for r in ranges if r.applies_to(q.name)]
    texts, pairs = sum(n_cells) * len(variants), sum(n * n for n in n_cells) * len(variants)
    if texts > MAX_PROTOCOL_TEXTS or pairs > MAX_PROTOCOL_PAIRS:
        raise fail("ranges", f"{texts} texts and {pairs} similarity pairs over its cells, more than a protocol "
                   f"takes ({MAX_PROTOCOL_TEXTS} texts, {MAX_PROTOCOL_PAIRS} pairs)",
                   "use fewer or shorter ranges, quantities or variants")


def _digits_words(doc: dict, fail) -> tuple[dict, tuple, dict, dict]:
    """``[digits_words]``: the digits, their words by language (and by quantity), checked against each other."""
    dw = doc.get("digits_words") or {}
    _check_keys(dw, "digits_words", fail)
    digits = tuple(dw.get("digits", ()))
    if dw.get("plural", "never") not in (*PLURAL_RULES, "language"):
        raise fail("digits_words.plural", f"unknown rule {dw.get('plural')!r}",
                   f"use one of {', '.join(PLURAL_RULES)} or language (each language's own rule)")
    words = {code: tuple(w) for code, w in (dw.get("words") or {}).items()}
    words_for = {code: {q: tuple(w) for q, w in per.items()} for code, per in (dw.get("words_for") or {}).items()}
    for code, w in [*words.items(), *((f"{c}.{q}", w) for c, per in words_for.items() for q, w in per.items())]:
        if len(w) != len(digits):
            raise fail(f"digits_words.words.{code}", f"{len(w)} words for {len(digits)} digits",
                       "give one word per digit, in the digits' order")
    return dw, digits, words, words_for



def _check_keys(table: dict, kind: str, fail, where: str | None = None) -> None:
    unknown = sorted(set(table) - KNOWN_KEYS[kind])
    if unknown:
        raise fail(f"{where or kind or '(top level)'}.{unknown[0]}" if (where or kind) else unknown[0],
                   "unknown key", f"use only {', '.join(sorted(KNOWN_KEYS[kind]))}")


def _list(doc: dict, key: str, fail) -> list[dict]:
    items = doc.get(key)
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise fail(key, "missing or empty", f"add at least one [[{key}]] table")
    return items


def _quantity(spec: dict, k: int, languages: dict, fail, check_units: bool = True) -> Quantity:
    where = f"quantities[{k}]"
    _check_keys(spec, "quantities", fail, where)
    name = spec.get("name")
    if not name:
        raise fail(f"{where}.name", "missing", 'name the quantity, e.g. name = "meter"')
    unit = str(spec.get("unit", name))
    if check_units:
        _check_unit(unit, f"quantities.{name}.unit", fail)
    forms = {}
    for code, pair in (spec.get("forms") or {}).items():
        if code not in languages:
            raise fail(f"quantities.{name}.forms.{code}", "a language without a [languages] table",
                       f"add [languages.{code}] or remove these forms")
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) and p for p in pair)):
            raise fail(f"quantities.{name}.forms.{code}", "not [singular, plural]",
                       'write forms.xx = ["meter", "meters"] (the same word twice where there is no plural)')
        forms[code] = (pair[0], pair[1])
    if not forms:
        raise fail(f"quantities.{name}.forms", "missing", 'add forms.en = ["meter", "meters"]')
    return Quantity(str(name), unit, forms)


def _check_unit(unit: str, key: str, fail) -> None:
    from ..quantities import registry

    try:
        registry().Unit(unit)
    except Exception:  # noqa: BLE001 - pint's UndefinedUnitError and parse errors
        raise fail(key, f"pint does not know the unit {unit!r}",
                   "name the physical unit as pint spells it (e.g. meter, milligram / deciliter, "
                   "millimole / liter)") from None


def _range(spec: dict, k: int, fail, languages: dict, quantity_names: set[str]) -> Range:
    where = f"ranges[{k}]"
    _check_keys(spec, "ranges", fail, where)
    name = spec.get("name")
    if not name:
        raise fail(f"{where}.name", "missing", 'name the range, e.g. name = "local_0_10"')
    key = f"ranges.{name}"
    generators = [g for g in ("values", "step", "linspace", "logspace") if g in spec]
    if len(generators) != 1:
        raise fail(key, "needs exactly one of values, step, linspace, logspace",
                   "e.g. step = { start = 0, stop = 10.5, step = 0.5 }")
    gen = generators[0]
    try:
        if gen == "values":
            values = np.asarray(spec["values"], dtype=np.float64)
        else:
            s = spec[gen]
            count = _count(gen, s)  # before anything is allocated (a step of 1e-12 would ask for TiBs)
            if count > MAX_RANGE_VALUES:
                raise fail(f"{key}.{gen}", f"{count} values, more than a range takes ({MAX_RANGE_VALUES})",
                           f"split it into ranges of at most {MAX_RANGE_VALUES} values")
            if gen == "step":
                values = np.arange(s["start"], s["stop"], s["step"])
            elif gen == "linspace":
                values = np.linspace(s["start"], s["stop"], count)
            else:  # built exactly: numpy's logspace differs in the last bit between instruction sets
                values = logspace(s["start"], s["stop"], count)
    except (KeyError, TypeError, ValueError) as err:
        raise fail(f"{key}.{gen}", f"cannot generate values ({type(err).__name__}: {err})",
                   "give start, stop and step (or num) as numbers") from None
    if "round" in spec:
        if not isinstance(spec["round"], int) or isinstance(spec["round"], bool):
            raise fail(f"{key}.round", f"{spec['round']!r} is not a whole number of decimals", "write round = 2")
        values = np.round(values, spec["round"])
    if spec.get("unique"):  # np.unique's sorted distinct values (without its import of numpy.ma: 15 ms a start)
        values = np.sort(np.asarray(values, dtype=float))
        values = values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values
    if spec.get("integer"):
        values = values.astype(int)
    values = np.asarray(values).astype(float)
    if values.ndim != 1 or len(values) < 3 or not np.isfinite(values).all():
        raise fail(key, f"{len(np.atleast_1d(values))} finite value(s)", "give a range of at least three values")
    if len(values) > MAX_RANGE_VALUES:  # every cell keeps its n x n similarity matrix
        raise fail(key, f"{len(values)} values, more than a range takes ({MAX_RANGE_VALUES})",
                   f"split it into ranges of at most {MAX_RANGE_VALUES} values")
    number_format = str(spec.get("format", "g"))
    _check_format(number_format, f"{key}.format", fail)
    plural = spec.get("plural")
    by_language = plural if isinstance(plural, dict) else {}
    for code, rule in ({"": plural} if plural is not None and not by_language else by_language).items():
        if rule not in PLURAL_RULES or (code and code not in languages):
            raise fail(f"{key}.plural{'.' + code if code else ''}", f"unknown rule {rule!r} or language",
                       f"use one of {', '.join(PLURAL_RULES)}, for languages of this protocol")
    asked = spec.get("quantities", [])
    if not isinstance(asked, list) or any(q not in quantity_names for q in asked):
        raise fail(f"{key}.quantities", f"{asked!r} names a quantity this protocol does not have",
                   f"list some of {', '.join(sorted(quantity_names))}")
    return Range(str(name), tuple(float(v) for v in values), number_format,
                 None if by_language else plural, dict(by_language), tuple(asked))


def _count(gen: str, s: dict) -> int:
    """How many values a step / linspace / logspace generator makes (ValueError when it cannot say)."""
    if gen == "step":
        start, stop, step = (float(s[k]) for k in ("start", "stop", "step"))
        if not all(np.isfinite([start, stop, step])) or step == 0:
            raise ValueError("start, stop and step must be finite numbers, step not 0")
        return max(0, int(np.ceil((stop - start) / step)))
    num = s["num"]
    if isinstance(num, bool) or not isinstance(num, (int, float)) or num != int(num):
        raise ValueError(f"num = {num!r} is not a whole number")
    return int(num)


def _check_format(number_format: str, key: str, fail) -> None:
    name, _, arg = number_format.partition(":")
    if name not in NUMBER_FORMATS or (arg and not arg.isdigit()) or (name == "fixed" and not arg):
        raise fail(key, f"unknown number format {number_format!r}",
                   "use g, plain, fixed:N, scientific, scientific:N, thousands or words")


def _variant(spec: dict, k: int, languages: dict, quantities: tuple[Quantity, ...], fail) -> Variant:
    where = f"variants[{k}]"
    _check_keys(spec, "variants", fail, where)
    label = spec.get("label")
    if not label or "/" in str(label):
        raise fail(f"{where}.label", "missing or contains '/'", 'label every variant, e.g. label = "ko"')
    key = f"variants.{label}"
    language = spec.get("language", next(iter(languages)))
    if language not in languages:
        raise fail(f"{key}.language", f"no [languages.{language}] table", f"add [languages.{language}]")
    templates = {"": spec["template"]} if "template" in spec else {}
    templates.update(spec.get("templates") or {})
    names = {q.name for q in quantities}
    for q, template in templates.items():
        if q and q not in names:
            raise fail(f"{key}.templates.{q}", "not a quantity of this protocol", f"use one of {', '.join(names)}")
        if "{number}" not in template:
            raise fail(f"{key}.template{'s.' + q if q else ''}", f"{template!r} has no {{number}}",
                       'write the number\'s place as {number}, e.g. "The rope is {number} {unit} long."')
    number_format = spec.get("format")
    if number_format is not None:
        _check_format(str(number_format), f"{key}.format", fail)
    return Variant(str(label), str(spec.get("kind", "")), str(language), templates,
                   None if number_format is None else str(number_format), bool(spec.get("reference", False)))
