"""Encode throughput and exam compute time: what ``fasteval bench`` measures, as data.

Throughput = distinct texts / median wall seconds of one ``encode`` call over all of them, for every
(batch size, thread count) on two text sets: the paper's strings (every distinct text of Exams 1 and 2)
and longer sentences (deterministic, 30-60 words). Exam compute = ``evaluate`` run twice on one encoder;
the first run pays one-off costs (JIT caches loaded, sessions warmed), the second is reported.

The model is loaded with the ``loader(name, **options) -> encoder`` given (by default, and from the CLI,
``fasteval.models.loader.load_model``), as for sweeps.
"""
from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from ..kernels import usable_cores

from ..errors import InputError

LONG_SEED = 20260602
LONG_WORDS = (30, 60)  # words per long sentence, inclusive bounds
# The packages whose versions decide a speed: the runtime fasteval uses and the peers it is measured against.
VERSIONS_OF = ("numpy", "numba", "onnxruntime-gpu", "onnxruntime", "tokenizers", "scipy", "torch",
               "sentence-transformers", "transformers", "rapidfuzz", "scikit-learn")

_SUBJECTS = ("the surveyor", "a student", "the old clock", "our neighbour", "the river", "a small robot",
             "the committee", "my grandmother", "the train to the coast", "a tired runner", "the bakery",
             "the new laboratory")
_VERBS = ("measured", "reported", "carried", "weighed", "counted", "described", "estimated", "recorded",
          "compared", "doubled")
_OBJECTS = ("the length of the bridge", "three kilograms of flour", "a liter of cold water",
            "the distance between two villages", "every second of the race", "the height of the tower",
            "forty meters of rope", "a bag of apples", "the temperature of the room", "the weight of the parcel",
            "the speed of the wind", "two hundred grams of sugar")
_TAILS = ("before the sun went down", "with great care", "for the third time this week", "in the early morning",
          "although nobody had asked", "while the rain kept falling", "after a long discussion",
          "because the old records were lost", "to everyone's surprise", "near the end of the summer",
          "using a borrowed instrument", "and wrote the number in a notebook")


def paper_texts() -> list[str]:
    """Every distinct text the paper embeds (Exam 1 cells, digits/words, conversion sides; Exam 2's numbers),
    in protocol order."""
    from ..exams import protocol_groups

    return list(dict.fromkeys(t for group in protocol_groups((1, 2)) for t in group))


def long_sentences(n: int = 256, seed: int = LONG_SEED) -> list[str]:
    """``n`` deterministic English sentences of 30-60 words (clauses drawn from fixed lists with ``seed``)."""
    if n < 0:
        raise InputError(f"The number of long sentences must be >= 0, got {n}.", "pass 0 to skip them.")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        target = rng.randint(*LONG_WORDS)
        words: list[str] = []
        while len(words) < target:
            clause = f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_TAILS)}"
            words.extend(clause.split())
        out.append(" ".join(words[:target]).capitalize() + ".")
    return out


def median_time(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> tuple[float, list[float]]:
    """(median wall seconds, every run's seconds) of ``fn()`` over ``repeats`` runs after ``warmup`` untimed ones."""
    if repeats < 1:
        raise InputError(f"repeats must be >= 1, got {repeats}.", "pass --repeats 1 or more.")
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), runs


@dataclass
class EncodeTiming:
    """One (text set, batch size, thread count): median seconds of encoding every text of the set once."""
    texts: str
    n_texts: int
    batch_size: int
    threads: int
    provider: str
    seconds: float
    runs: list[float]

    @property
    def strings_per_s(self) -> float:
        return self.n_texts / self.seconds if self.seconds > 0 else float("inf")


@dataclass
class BenchResult:
    model: str
    provider: str
    repeats: int
    encode: list[EncodeTiming] = field(default_factory=list)
    exams: tuple[int | str, ...] = ()
    exam_cold: dict[str, float] = field(default_factory=dict)  # evaluate's timings, first run
    exam_warm: dict[str, float] = field(default_factory=dict)  # the same, second run (the reported one)
    machine: dict[str, Any] = field(default_factory=dict)
    served: list[dict[str, Any]] = field(default_factory=list)  # a served model: one row per (batch, concurrency)
    reference: str | None = None  # the local model timed beside a served one

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "provider": self.provider, "repeats": self.repeats, "machine": self.machine,
            "encode": [{"texts": e.texts, "n_texts": e.n_texts, "batch_size": e.batch_size, "threads": e.threads,
                        "provider": e.provider, "seconds": e.seconds, "strings_per_s": e.strings_per_s,
                        "runs": e.runs} for e in self.encode],
            "exams": list(self.exams), "exam_seconds_cold": self.exam_cold, "exam_seconds_warm": self.exam_warm,
            "served": self.served, "reference": self.reference,
        }


def parse_int_list(value: str, what: str) -> list[int]:
    """"1,8,32" -> [1, 8, 32]; every item a positive integer, duplicates dropped, order kept."""
    try:
        items = [int(part) for part in value.replace(" ", "").split(",") if part]
    except ValueError:
        items = []
    if not items or any(i < 1 for i in items):
        raise InputError(f"Cannot read {what} {value!r}.", "pass positive integers separated by commas, e.g. 1,8,32.")
    return list(dict.fromkeys(items))


def run_bench(loader: Callable[..., Any] | None = None, model: str | None = None, *,
              batch_sizes: Sequence[int] = (1, 8, 32, 128), threads: Sequence[int] | None = None,
              provider: str = "auto", repeats: int = 3, n_long: int = 256,
              exams: Sequence[int | str] | str = (1, 2, 3), on_step: Callable[[str], None] | None = None,
              concurrency: Sequence[int] = (1, 2, 4, 8), reference: str | None = None,
              served: dict | None = None) -> BenchResult:
    """Throughput for every (text set, threads, batch size), then the exams' compute (evaluate twice).

    ``loader(model, provider=, batch_size=, threads=)`` (default ``load_model``; ``model`` default the default
    model) gives a fresh encoder for each setting, so a setting never inherits another's session. ``threads``
    default: 1 and every usable core. ``exams`` a selection ("1,2,3", or a sequence); ``()`` or "none" skips the
    exam timing. A served ``model``
    (``URL[#MODEL]``) is timed over ``batch_sizes`` x ``concurrency`` (texts/s and the server's tokens/s; the
    client options in ``served``), and ``reference``, a local model, is timed beside it as a local model is.
    """
    from ..exams import parse_exams
    from ..plan import evaluate
    from ..choices import is_url, public_model

    step = on_step or (lambda _name: None)
    if repeats < 1:
        raise InputError(f"repeats must be >= 1, got {repeats}.", "pass --repeats 1 or more.")
    from ...models.loader import DEFAULT_MODEL, load_model

    if loader is None:
        loader = cast(Callable[..., Any], load_model)
    model = model if model is not None else DEFAULT_MODEL
    threads = list(threads) if threads is not None else sorted({1, usable_cores()})
    none = isinstance(exams, str) and exams.strip().lower() == "none"  # a bad selection fails before any timing
    chosen: tuple[int | str, ...] = () if none or not exams else parse_exams(exams)
    sets = {"paper": paper_texts()}
    if n_long:
        sets["long"] = long_sentences(n_long)
    # what is shown and written: a served model's URL without its credentials (a key in the query, user:password@)
    result = BenchResult(model=public_model(model), provider=provider, repeats=repeats, machine=machine_info())
    local: str | None = model
    if is_url(model):
        result.provider, result.reference, local = "served", reference, reference
        result.served = served_throughput(loader, model, batch_sizes, concurrency, sets, repeats, step, served)
    for t in threads if local else ():
        for b in batch_sizes:
            encoder = loader(local, provider=provider, batch_size=b, threads=t, batching="paper")
            result.provider = getattr(encoder, "provider", provider) if local == model else result.provider
            for name, texts in sets.items():
                step(f"encode {name} threads={t} batch={b}")
                encoder.encode(texts[: max(b, 8)])  # warm the session on this shape family
                seconds, runs = median_time(lambda: encoder.encode(texts), repeats, warmup=0)
                result.encode.append(EncodeTiming(name, len(texts), b, t, getattr(encoder, "provider", provider),
                                                  seconds, runs))
            del encoder
    if chosen and not is_url(model):
        result.exams = chosen
        encoder = loader(model, provider=provider)
        result.provider = getattr(encoder, "provider", provider)
        step("exams (cold)")
        result.exam_cold = evaluate(encoder, exams=result.exams).timings
        step("exams (warm)")
        result.exam_warm = evaluate(encoder, exams=result.exams).timings
    return result


def served_throughput(loader: Callable[..., Any], url: str, batch_sizes: Sequence[int], concurrency: Sequence[int],
                      sets: dict[str, list[str]], repeats: int, step: Callable[[str], None],
                      served: dict | None = None) -> list[dict[str, Any]]:
    """A deployment's throughput: per (text set, batch size, concurrency), the median seconds of embedding the
    set, texts/s, and tokens/s as the server counts them (its ``usage``; None when it reports none)."""
    rows = []
    for b in batch_sizes:
        for c in concurrency:
            encoder = loader(url, batch_size=b, served={**(served or {}), "concurrency": c})
            for name, texts in sets.items():
                step(f"served {name} batch={b} concurrency={c}")
                encoder.encode(texts[: max(b, 8)])  # a warm connection pool
                before = encoder.usage.total_tokens or encoder.usage.prompt_tokens
                seconds, runs = median_time(lambda: encoder.encode(texts), repeats, warmup=0)
                tokens = ((encoder.usage.total_tokens or encoder.usage.prompt_tokens) - before) // repeats or None
                rows.append({"texts_set": name, "batch_size": b, "concurrency": c, "texts": len(texts),
                             "tokens": tokens, "seconds": seconds, "runs": runs, "texts_per_s": len(texts) / seconds,
                             "tokens_per_s": None if tokens is None else tokens / seconds})
            encoder.close()
    return rows


def bench_text(result: BenchResult) -> str:
    """The terminal table: one line per (text set, threads, batch size), then the exam compute seconds."""
    lines = [f"fasteval bench: {result.model} on {result.provider} "
             f"({result.machine.get('cpu', '?')}, {result.machine.get('cores', '?')} cores); "
             f"median of {result.repeats} run(s)",
             "", f"{'texts':<6} {'n':>6} {'threads':>7} {'batch':>6} {'seconds':>9} {'strings/s':>11}"]
    for e in result.encode:
        lines.append(f"{e.texts:<6} {e.n_texts:>6} {e.threads:>7} {e.batch_size:>6} {e.seconds:>9.3f} "
                     f"{e.strings_per_s:>11.1f}")
    if result.served:
        lines += ["", f"served by {result.model}" + (f" (beside it above: {result.reference}, local)"
                                                      if result.reference else ""),
                  f"{'texts':<6} {'n':>6} {'batch':>6} {'concurrency':>11} {'seconds':>9} {'texts/s':>9} "
                  f"{'tokens/s':>10}"]
        for r in result.served:
            tokens = "n/a" if r["tokens_per_s"] is None else f"{r['tokens_per_s']:.0f}"
            lines.append(f"{r['texts_set']:<6} {r['texts']:>6} {r['batch_size']:>6} {r['concurrency']:>11} "
                         f"{r['seconds']:>9.3f} {r['texts_per_s']:>9.1f} {tokens:>10}")
    if result.exam_warm:
        keys = list(dict.fromkeys(list(result.exam_warm) + list(result.exam_cold)))
        lines += ["", f"{'exam step':<11} {'cold s':>9} {'warm s':>9}"]
        for k in keys:
            lines.append(f"{k:<11} {result.exam_cold.get(k, float('nan')):>9.3f} "
                         f"{result.exam_warm.get(k, float('nan')):>9.3f}")
        lines.append(f"{'total':<11} {sum(result.exam_cold.values()):>9.3f} {sum(result.exam_warm.values()):>9.3f}")
    return "\n".join(lines)


def package_versions(names: Sequence[str] = VERSIONS_OF) -> dict[str, str | None]:
    """name -> installed version (None if absent), read from package metadata without importing anything."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine_info() -> dict[str, Any]:
    """CPU model and its SIMD flags (``models.machine.cpu_facts``), usable cores, RAM, OS, Python and the versions
    of VERSIONS_OF."""
    from ...models.machine import cpu_facts

    facts = cpu_facts()
    cpu, simd = facts["cpu"], facts["simd"]
    ram = None
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        pass
    cores = usable_cores()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpu": cpu, "simd": simd, "cores": cores, "ram_gib": None if ram is None else round(ram, 1),
            "load_1min": None if load is None else round(load, 2), "os": platform.platform(),
            "python": sys.version.split()[0], "versions": package_versions()}


def write_bench_json(path, result: BenchResult) -> None:
    """Write ``result`` as strict JSON to ``path`` atomically; OutputError if it cannot be written."""
    from pathlib import Path

    from ..errors import OutputError
    from ..io import atomic_write, dumps

    path = Path(path).expanduser()
    try:
        atomic_write(path, dumps(result.to_dict()))
    except OSError as err:
        raise OutputError(f"Cannot write {path}: {err.strerror or err}.", "pass a writable --json path.") from None
