"""fasteval: a fast and faithful evaluator of how text-embedding models measure physical quantities.

Reproduces the benchmark of "Embedding Models Measure in Peculiar Ways" (Opitz & Michail, arXiv 2609.20821).
Importing this package is cheap: numba, onnxruntime and torch load only when a computation needs them.
"""

import importlib
import importlib.util
import logging
import sys

__version__ = "0.1.0"

# The library logs to the "fasteval" logger and prints nothing; the CLI installs the handler users see. A harness
# that embeds fasteval configures logging as it likes (the records propagate to its root logger).
logging.getLogger("fasteval").addHandler(logging.NullHandler())

# The public edge: what users import is `fasteval.<name>` for the names below and `fasteval.mteb` (its own
# `__all__`); `fasteval.core`, `fasteval.models` and `fasteval.cli` are internal and change without notice
# (tests/house/test_public.py pins both lists). Each name is loaded on first use (PEP 562), so `import fasteval`
# (and `fasteval --help`) never pulls in numba, onnxruntime or torch: name -> (module, attribute).
_LAZY = {
    "evaluate": (".core.plan", "evaluate"),
    "check": (".core.runs.check", "check"),
    "drift": (".core.runs.drift.gate", "drift"),
    "save_receipt": (".core.runs.drift.receipts", "save_receipt"),
    "load_model": (".models.loader", "load_model"),
    "model_folder": (".models.loader", "model_folder"),
    "result_files": (".core.results.files", "result_files"),
    "load_result": (".core.results.read", "load_result"),
    "Encoder": (".core.embeddings", "Encoder"),
    "PhysScoreEvaluator": (".core.runs.training", "PhysScoreEvaluator"),  # sentence-transformers (the train extra)
    # what string similarity alone scores (docs/vectors.md): the surface-form baselines and their Table 1 rows
    "ByteCounts": (".models.baselines", "ByteCounts"),
    "CharTrigrams": (".models.baselines", "CharTrigrams"),
    "surface_baselines": (".core.protocol.baselines", "surface_baselines"),
    # the authors' published numbers for the paper's 24, and a run beside them (docs/published.md)
    "published": (".core.published", "published"),
    "published_model": (".core.published", "published_model"),
    "place": (".core.published", "place"),
    "reproduction": (".core.published", "reproduction"),
    # the types a library user holds: what evaluate, check, drift and load_result return, and what they raise
    "ModelResult": (".core.results.model", "ModelResult"),
    "CheckResult": (".core.exams.quantity_check", "CheckResult"),
    "DriftReport": (".core.results.drift", "DriftReport"),
    "EmbeddingTable": (".core.embeddings", "EmbeddingTable"),
    "Protocol": (".core.protocol.spec", "Protocol"),
    "FastevalError": (".core.errors", "FastevalError"),  # every error fasteval raises on purpose; its children:
    "InputError": (".core.errors", "InputError"),  # bad input (exit 2 on the command line)
    "ModelError": (".core.errors", "ModelError"),  # a model that cannot be loaded or run
    "SourceError": (".core.errors", "SourceError"),  # a model that cannot be fetched
    "OutputError": (".core.errors", "OutputError"),  # a result that cannot be written
    "ProtocolError": (".core.protocol.spec", "ProtocolError"),  # a protocol file that is not one (an InputError)
}

__all__ = [*_LAZY, "mteb", "__version__"]


def _register_lazily(public: str, module: str) -> None:
    """``import fasteval.mteb`` and ``from fasteval.mteb import tasks`` as users write them: the module of
    ``module`` is registered under both names now, and runs on first use (importlib's own LazyLoader; no import
    hook, one file, one module object)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.loader is not None, module  # a module of this package
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    lazy = importlib.util.module_from_spec(spec)
    sys.modules[module] = sys.modules[public] = lazy
    loader.exec_module(lazy)
    globals()[public.rpartition(".")[2]] = lazy  # the attribute, as the import system sets it for a submodule


# the MTEB integration (the mteb extra), fasteval.core.mteb
if "fasteval.mteb" not in sys.modules:
    _register_lazily("fasteval.mteb", "fasteval.core.mteb")


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'fasteval' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    return getattr(importlib.import_module(module, __name__), attribute)


def __dir__():
    return sorted([*globals(), *_LAZY])
