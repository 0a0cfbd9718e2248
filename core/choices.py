"""The names of every option fasteval offers, in one place and without heavy imports.

The library validates against these tuples and the CLI builds its Enums from them, so adding a choice is
one edit here (plus the code that implements it). The first entry of each tuple is the default. The exams
are not here: they are the exam registry (``fasteval.core.exams``); the protocols are files
(``fasteval.core.protocol.loading``).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import InputError

# Similarity between two embeddings: cosine (the paper), dot product, negated Euclidean distance; and the names
# other tools give them, accepted as they are.
SIMILARITIES: tuple[str, ...] = ("cos", "dot", "l2")
# drift's invariance gate: "cosine" (a condition below INVARIANCE_MIN drifts) or "bitwise" (any difference drifts:
# a deployment that promises bit-exact answers, as vLLM's batch-invariant mode does).
INVARIANCE_TIERS: tuple[str, ...] = ("cosine", "bitwise")
# What a vector store may keep instead of the float vectors: the one table of the forms. Each form's family says how
# core/vectors.py makes it, what it stands for and how it is scored:
#   "integer": per-dimension ranges from a calibration set cut into 2**bits levels; it stands for its buckets'
#              centres and is scored with the similarity asked of its integers;
#   "sign":    one bit a dimension, the sign (of the vectors less the calibration mean where calibrated); it stands for
#              +-1 and is scored with Hamming similarity, or (asymmetric) as a float query's dot product with them;
#   "turbo":   TurboQuant's codes (turbovec), standing for the vectors they decode to, scored as turbovec's search
#              scores a float query (asymmetric), turbovec's version recorded with the result.
# ``needs``: the extra that installs what it scores with; ``said``: what it stands for, in a few words (the help of
# every option that takes one).
@dataclass(frozen=True)
class Quantization:
    name: str
    family: str  # "integer", "sign" or "turbo"
    bits: int  # a dimension's bits in the store
    calibrated: bool  # ranges (or a centre) taken from a calibration set
    asymmetric: bool  # scored as the store scores a float query against the stored vectors
    said: str
    needs: str | None = None  # the extra it needs installed


QUANTIZATIONS: tuple[Quantization, ...] = (
    Quantization("int8", "integer", 8, True, False,
                 "sentence-transformers' int8, ranges calibrated on Table 1's texts or --calibration"),
    Quantization("int4", "integer", 4, True, False, "int8's arithmetic at 16 levels, two dimensions a byte, "
                                                    "calibrated likewise"),
    Quantization("binary", "sign", 1, False, False, "the sign bits, Hamming similarity"),
    Quantization("binary-centred", "sign", 1, True, False,
                 "the sign bits of the vectors less the calibration mean, Hamming"),
    Quantization("binary-asymmetric", "sign", 1, False, True, "a float query's dot product with the stored sign bits"),
    Quantization("turboquant4", "turbo", 4, False, True,
                 "TurboQuant at 4 bits, scored as turbovec's search scores (the stores extra)", needs="stores"),
    Quantization("turboquant2", "turbo", 2, False, True, "TurboQuant at 2 bits, likewise", needs="stores"),
)
FORMS: dict[str, Quantization] = {q.name: q for q in QUANTIZATIONS}
VECTOR_QUANTIZATIONS: tuple[str, ...] = tuple(FORMS)
CALIBRATED_FORMS: tuple[str, ...] = tuple(q.name for q in QUANTIZATIONS if q.calibrated)
# The vector ladder (fasteval sweep --ladder vectors): the truncations tried where below the model's dimension, the
# forms, the common store setting beside them, and the bytes a vector of the bytes-matched view.
LADDER_DIMENSIONS: tuple[int, ...] = (512, 256, 128, 64)
BYTE_BUDGETS: tuple[int, ...] = (48, 96, 192)
COMMON_STORE: tuple[int, str] = (256, "binary")  # the first 256 dimensions as sign bits: a rung of its own


def vector_forms_help() -> str:
    """Every vector form and what it stands for, as an option's help says it."""
    return "; ".join(f"{q.name} ({q.said})" for q in QUANTIZATIONS)


def ladder_help() -> str:
    """The vector ladder's rungs, as --ladder's help says them."""
    turbo = [q.name for q in QUANTIZATIONS if q.family == "turbo"]
    return ("score each model as a vector store keeps it, rung by rung, from one embedding run: the floats, their "
            f"first {'/'.join(map(str, LADDER_DIMENSIONS))} dimensions, "
            f"{', '.join(q for q in VECTOR_QUANTIZATIONS if q not in turbo)}, {' and '.join(turbo)} (where turbovec "
            f"is installed), {COMMON_STORE[0]}+{COMMON_STORE[1]}, and the "
            f"bytes-matched view (each form at {'/'.join(map(str, BYTE_BUDGETS))} bytes a vector); one table, "
            "OUT/ladders/<model>.csv")
SIMILARITY_ALIASES = {"cosine": "cos", "dot_product": "dot", "dot-product": "dot", "ip": "dot",
                      "inner_product": "dot", "euclidean": "l2", "euclid": "l2"}
# What a sweep does with a result folder that exists.
OVERWRITE: tuple[str, ...] = ("only-missing", "never", "always")
# onnxruntime execution providers; auto = the GPU when onnxruntime can use one, else the CPU.
PROVIDERS: tuple[str, ...] = ("auto", "cpu", "cuda")
# Precision of the exported graph, opt-in beyond fp32, both made from the fp32 export: fp16 by onnxscript's
# onnxruntime fusions and onnxruntime's float16 conversion (fused for the GPU, float16 inside, float32 in and out;
# models/onnx/derive.py FP16_OPTIMIZATION), int8 by onnxruntime's dynamic quantization (weights int8 per channel,
# activations per batch; INT8_QUANTIZATION).
DTYPES: tuple[str, ...] = ("fp32", "fp16", "int8")
# How texts are ordered into batches inside one encode call: sentence-transformers' (by characters, longest
# first: the paper's) or by token count.
BATCH_ORDERS: tuple[str, ...] = ("text-length", "token-length")
# How a run's texts are grouped into encode calls and batches: paper (one call per protocol group, batches of
# --batch-size texts) or packed (every distinct text in one call, sorted by token count, batches cut by a token
# budget). Packed gives every Exam 1 cell, Exam 2 tau and Exam 3 mean of the paper grouping on
# all-MiniLM-L6-v2 and all-mpnet-base-v2, but measured no faster on this 2-core CPU (1.10 s against 1.12 s for
# the paper's strings), so the faithful grouping stays the default (benchmarks/RESULTS.md).
BATCHINGS: tuple[str, ...] = ("paper", "packed")
PACKED_BATCH_TOKENS = 1024  # tokens (rows x the longest row, padding included) per packed batch: the fastest
                            # of 128..4096 measured here (512-1024 again once texts were sorted by real tokens)
# How packed batching orders the texts, recorded in a packed run's settings (and so its keys): by their real tokens,
# padding not counted. Before, the tokenizer's padded lengths were read (every text as long as the longest), so the
# texts were never sorted and each batch was padded to near the longest: 25-30% slower, other batches.
PACKING = "unpadded-tokens"
# The report's heatmap colours: "data", each figure's own range (one scale for all its panels, so they compare),
# where a model's cosines sit in 0.6-1.0 and the structure shows; "paper", the paper's fixed 0-1.
HEATMAP_SCALES: tuple[str, ...] = ("data", "paper")
# Where a sweep runs.
EXECUTORS: tuple[str, ...] = ("local", "ray")
# Bootstrap resamples for Exam 1's intervals (--bootstrap; 0 turns them off).
DEFAULT_RESAMPLES = 10_000
# ... and of drift's paired bootstrap of Δτ (fasteval drift --bootstrap): a CI gate's, fewer (its interval is read
# beside a verdict that does not depend on it).
DRIFT_RESAMPLES = 2000
# A served model's client (--model URL): the variable holding the API key, requests in flight, seconds a request
# may take, retries of a request (fasteval.models.served).
API_KEY_ENV = "FASTEVAL_API_KEY"
SERVED_CONCURRENCY = 4
SERVED_TIMEOUT_S = 60.0
SERVED_RETRIES = 6


def check_choice(value: str, choices: Iterable[str], what: str, flag: str | None = None) -> str:
    """``value`` if it is one of ``choices``, else an InputError naming the choices (and the flag to use), with the
    closest one when there is a close one."""
    choices = tuple(choices)
    if value not in choices:
        where = f" with {flag}" if flag else ""
        raise InputError(f"Unknown {what} {value!r}{did_you_mean(value, choices)}.",
                         f"pass one of {', '.join(map(str, choices))}{where}.")
    return value


def similarity(value: str) -> str:
    """A similarity's name, its common aliases accepted ("cosine" is cos, "euclidean" l2)."""
    name = str(value).strip().lower()
    return check_choice(SIMILARITY_ALIASES.get(name, name), SIMILARITIES, "similarity", "--similarity")


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """' (did you mean "x"?)' for the closest of ``known`` (case aside), else those that contain it (a part of a
    name: "MiniLM" -> ' (did you mean "all-MiniLM-L6-v2" or "paraphrase-multilingual-MiniLM-L12-v2"?)'), else ''."""
    import difflib

    known = [str(k) for k in known]
    lowered = {k.lower(): k for k in known}
    part = str(value).lower()
    holding = [k for low, k in lowered.items() if len(part) >= 3 and part in low and part != low]
    if holding:
        return f" (did you mean {' or '.join(repr(k) for k in holding[:4])}?)"
    match = difflib.get_close_matches(part, list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[match[0]]!r}?)" if match else ""


def is_url(name: object) -> bool:
    """Whether a --model value names a served model (``http://`` or ``https://``)."""
    return isinstance(name, str) and name.lower().startswith(("http://", "https://"))


def public_url(url: str) -> str:
    """``url`` as it may be shown or written: scheme, host, port and path; no user:password@ and no query string
    (API keys travel in both), whatever the URL's shape (one without a host keeps no part of its authority)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname or "", parts.port
    except ValueError:  # a port that is not a number
        return "<an unreadable URL>"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def public_address(address: str) -> str:
    """A cluster address (``HOST:PORT``, ``ray://HOST:PORT``, any ``SCHEME://``) as it may be shown: without a
    ``user:password@`` and without a query string."""
    scheme, sep, rest = address.partition("://") if "://" in address else ("", "", address)
    authority, slash, path = rest.split("?", 1)[0].split("#", 1)[0].partition("/")
    return scheme + sep + authority.rpartition("@")[2] + slash + path


def public_model(spec: object) -> str:
    """A --model value as it may be shown or written: a URL[#MODEL] without credentials, anything else as it is."""
    if not is_url(spec):
        return str(spec)
    url, hash_, model = str(spec).partition("#")
    return public_url(url) + hash_ + model
