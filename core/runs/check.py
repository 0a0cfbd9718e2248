"""``fasteval.check(encoder, anchor, candidates)``: embed your own quantities with your own model and see
whether similarity follows physical distance (the scoring is ``fasteval.core.exams.quantity_check``)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..embeddings import Encoder, embed_groups
from ..errors import InputError
from ..exams.quantity_check import CheckResult, parse_check_inputs, score_check
from ..vectors import vector_words


def check_inputs(quantities: list[str] | None = None, file: str | Path | None = None) -> tuple[str, list[str]]:
    """The anchor and the candidates of ``fasteval check``, given as arguments or one a line in ``file`` ('#'
    comments): InputError for both ways at once and for none. ``check`` reads them with pint (before anything is
    downloaded)."""
    from ..io import read_entries_file

    if quantities and file:
        raise InputError("fasteval check got quantities both as arguments and with --file.",
                         "pass them one way: as arguments, or one a line in the --file FILE.")
    texts = list(quantities or []) + (read_entries_file(Path(file), what="quantities file") if file else [])
    if not texts:
        raise InputError("fasteval check needs an anchor and one or more candidates.",
                         "pass them as arguments or with --file FILE (one a line, the anchor first).")
    return texts[0], texts[1:]


def check(encoder: Encoder | str | None, anchor: str, candidates: list[str], *, similarity: str = "cos",
          normalize_quantities: bool = False, name: str | None = None, all_discordant: bool = False,
          dimensions: int | None = None, vector_quantization: str | None = None,
          calibration: Any = None, **load_options: Any) -> CheckResult:
    """Score ``candidates`` against ``anchor`` with ``encoder`` (anything the one door takes: an object with
    ``encode(list[str])``, a name, folder or URL loaded with ``load_options``; None: the default model), planned
    as every run is (``core.plan``).

    The anchor and the candidates are embedded in one call (normalised rows, as the paper's exams);
    ``normalize_quantities`` gives the encoder each text's canonical form instead ("2 kilometers" ->
    "2000 meters"). Raises InputError for a text pint cannot read, one of another dimension than the anchor,
    or fewer than two candidates. Every discordant pair is counted; ``all_discordant`` lists them all (else
    the first ``DISCORDANT_LIST_LIMIT``, largest gap first). ``dimensions``, ``vector_quantization`` and
    ``calibration`` score the vectors a store keeps (``core.vectors``; int8 is calibrated on the paper's Table 1
    texts, embedded too, unless ``calibration`` names others).
    """
    from ...models.sources.registry import DEFAULT_MODEL, is_local
    from ..plan import plan, scoring
    from ..quantities import canonical_text, load_registry_in_background

    chosen = scoring(exams=(1,), similarity=similarity, bootstrap=0, dimensions=dimensions,
                     vector_quantization=vector_quantization, calibration=calibration)
    metric = chosen.similarity
    encoder = DEFAULT_MODEL if encoder is None else encoder
    # pint's registry (~0.25 s) loads while the model loads and onnxruntime opens its session (which leaves the GIL
    # free); the texts are read before anything could be downloaded or asked of a server, and before the encoder
    # is given their canonical forms
    read_first = normalize_quantities or (isinstance(encoder, str) and not is_local(encoder))
    if read_first:
        parsed_anchor, parsed = parse_check_inputs(anchor, list(candidates))
    view = plan(encoder, chosen, name=name, **load_options).view
    if not read_first:
        load_registry_in_background()
    texts = list(dict.fromkeys([anchor, *candidates]))
    rewrite = canonical_text if normalize_quantities else None
    extra = [t for t in chosen.calibration_texts() if t not in texts]
    table = embed_groups(view.encoder, [texts] + ([extra] if extra else []), rewrite=rewrite)
    if not read_first:
        parsed_anchor, parsed = parse_check_inputs(anchor, list(candidates))
    if chosen.vectors is not None:
        table = chosen.vectors.apply(table, chosen.calibration_set())
    sims = table.similarities(list(candidates), [anchor], metric)[:, 0]
    encoded = [rewrite(t) if rewrite else t for t in candidates]
    words = vector_words(chosen.vectors.keyed()) if chosen.vectors is not None else ""
    result = score_check(parsed_anchor, parsed, sims, model=view.name + (f" [{words}]" if words else ""),
                         similarity=metric, encoded_as=encoded,
                         all_discordant=all_discordant)
    result.normalized = normalize_quantities
    result.anchor_encoded_as = rewrite(anchor) if rewrite else anchor
    return result
