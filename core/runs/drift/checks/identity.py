"""Identity: what each side of a drift says it is (a served model its id, URL, what /models and /info say, the
longest input it takes and its parameters; a local model its name, dtype and content hashes: ``identity_of``), the
model id the candidate must say it is (``--expect-model``: ``model_id_match``), the weights' precision either
states, in one name (``precision_of``), compared with what is expected (``precision_mismatch``), and the groups the
candidate's kind of server is known to move (``KNOWN_DIFFERENCES``: the report's --accept hint)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....embeddings import FixedTexts
from ....results.drift_findings import SIDES, Identity, KnownDifferences, SideIdentity, VectorsKept, from_record

if TYPE_CHECKING:
    from . import DriftRun

STAGE = "scored"
STEP = ("identity", "who each side says it is")


def applies(run: DriftRun) -> bool:
    return True


def check(run: DriftRun) -> Identity:
    sides = {side: identity_of(p.view) for side, p in zip(SIDES, run.plans)}
    for side, s in zip(SIDES, run.scorings):  # what a store keeps of a side, where it is not the floats
        if s.vectors is not None:
            sides[side].vectors = from_record(VectorsKept, s.vectors.keyed())
    said, expected = sides["candidate"].model, run.options.expect_model
    match = model_id_match(said, expected) if expected is not None else None
    mismatch = (f"the candidate says it is {said!r}, expected {expected!r}"
                if expected is not None and match is None else None)
    precision = {side: precision_of(sides[side]) for side in SIDES}
    return Identity(sides, mismatch=mismatch, match=match, precision=precision,
                    precision_mismatch=precision_mismatch(precision, run.options.expect_precision),
                    known_differences=known_differences(sides["candidate"]))


def model_id_match(said: Any, expected: str) -> str | None:
    """How a served model's id (``said``) names the ``expected`` one: "exactly", or "as the last path component(s)
    of 'models/all-MiniLM-L6-v2'" (infinity and others serve a model by its path); None when it names another."""
    if not isinstance(said, str):
        return None
    if said == expected:
        return "exactly"
    tail = [part for part in expected.strip("/").split("/") if part]
    parts = [part for part in said.strip("/").split("/") if part]
    if tail and len(parts) > len(tail) and parts[-len(tail):] == tail:
        return f"as the last path component{'s' if len(tail) > 1 else ''} of {said!r}"
    return None


def identity_of(view) -> SideIdentity:
    """What an encoder says it is: a served model its id, URL and what /models and /info say; a local one its name
    and content hashes, its dtype and the provider it runs on (``view`` as it ran: a GPU that fell back says cpu);
    anything else its name. ``max_tokens``: the longest input it takes or truncates to, where it says (a local
    model's max_seq_length, vLLM's max_model_len, llama.cpp's n_ctx); ``parameters``: llama.cpp's n_params. A
    receipt says its reference's, and names the file."""
    if isinstance(view.encoder, FixedTexts):  # an encoder of a fixed text set (a receipt) says its reference's identity
        return from_record(SideIdentity, dict(view.encoder.identity))
    info = view.info
    deployment = info.get("deployment")
    if isinstance(deployment, dict):
        server = _dict(deployment.get("server"))
        meta = _dict(server.get("meta"))
        model = deployment.get("model")
        return SideIdentity("served", None if model is None else str(model), url=_str_or_none(deployment.get("url")),
                            server=deployment.get("server") if isinstance(deployment.get("server"), dict) else None,
                            info=deployment["info"] if isinstance(deployment.get("info"), dict) else None,
                            max_tokens=_int_or_none(server.get("max_model_len") or meta.get("n_ctx")),
                            parameters=_int_or_none(meta.get("n_params")))
    if info.get("onnx_sha256") or info.get("source_sha256"):
        return SideIdentity("local", view.name, dtype=_str_or_none(info.get("dtype")),
                            provider=_str_or_none(info.get("provider")),
                            source_sha256=_str_or_none(info.get("source_sha256")),
                            onnx_sha256=_str_or_none(info.get("onnx_sha256")),
                            max_tokens=_int_or_none(info.get("max_seq_length")))
    return SideIdentity("object", view.name)


def _dict(value) -> dict:
    """``value`` where it is a dict, else an empty one (what a server says is not always the shape expected)."""
    return value if isinstance(value, dict) else {}


def _str_or_none(value) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


# How servers and exports name a weight precision -> one name (the rest are compared as said, lower case).
PRECISION_NAMES = {"f32": ("f32", "fp32", "float32"), "f16": ("f16", "fp16", "float16", "half"),
                   "bf16": ("bf16", "bfloat16")}


def normalize_precision(said: object) -> str | None:
    """A precision as fasteval names it: "all F32" (llama.cpp), "float32" (TEI), "fp32" (an export) -> "f32";
    "Q8_0" -> "q8_0"; None when nothing is said."""
    if not isinstance(said, str) or not said.strip():
        return None
    name = said.strip().lower()
    for prefix in ("all ", "mostly "):
        name = name.removeprefix(prefix)
    return next((k for k, names in PRECISION_NAMES.items() if name in names), name)


def precision_of(identity: SideIdentity) -> str | None:
    """The weights' precision an identity states: a local model's dtype, llama.cpp's /models ``meta.ftype``, TEI's
    /info ``dtype``; None when it states none (vLLM, infinity, OpenAI)."""
    meta = _dict((identity.server or {}).get("meta"))
    return normalize_precision(identity.dtype or meta.get("ftype") or (identity.info or {}).get("dtype"))


def precision_mismatch(precision: dict, expected: str | None) -> str | None:
    """Why the candidate's stated precision is not the one expected (``expected``, else the reference's where both
    state one); None when it is."""
    cand = precision.get("candidate")
    if expected is not None:
        want = normalize_precision(expected)
        if cand != want:
            return (f"the candidate serves {cand} weights, expected {want}" if cand else
                    f"the candidate does not say its precision, expected {want}")
        return None
    ref = precision.get("reference")
    if ref and cand and ref != cand:
        return f"the candidate serves {cand} weights, the reference {ref}"
    return None


# What a kind of server is known to embed differently from sentence-transformers on a faithful deployment (seen on
# the real servers of the tests): the drift groups it moves, and why. A deployer who accepts that gates the rest
# with --accept GROUP.
KNOWN_DIFFERENCES = {
    "llama.cpp": {"scripts": "its WordPiece tokenizes Hangul differently",
                  "length": "it embeds up to its context (512 tokens) where sentence-transformers cuts at 256"},
}


def server_kind(identity: SideIdentity) -> str | None:
    """The kind of server an identity comes from, where it is one of KNOWN_DIFFERENCES' (llama.cpp's /models entry
    carries ``meta``); None otherwise."""
    return "llama.cpp" if isinstance((identity.server or {}).get("meta"), dict) else None


def known_differences(identity: SideIdentity) -> KnownDifferences | None:
    """What the kind of server ``identity`` comes from is known to move (its kind, the groups and why); None for
    another."""
    kind = server_kind(identity)
    return KnownDifferences(kind, dict(KNOWN_DIFFERENCES[kind])) if kind in KNOWN_DIFFERENCES else None
