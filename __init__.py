"""fasteval: a fast and faithful evaluator of how text-embedding models measure physical quantities.

Reproduces the benchmark of "Embedding Models Measure in Peculiar Ways" (Opitz & Michail, arXiv 2609.20821).
Importing this package is cheap: numba, onnxruntime and torch load only when a computation needs them.
"""

import importlib
import logging

__version__ = "0.1.0"

# The library logs to the "fasteval" logger and prints nothing; the CLI installs the handler users see. A harness
# that embeds fasteval configures logging as it likes (the records propagate to its root logger).
logging.getLogger("fasteval").addHandler(logging.NullHandler())

# The public names, each loaded on first use (PEP 562), so `import fasteval` (and `fasteval --help`) never pulls
# in numba, onnxruntime or torch: name -> (module, attribute; None for the module itself).
_LAZY = {
    "evaluate": (".core.runs.evaluate", "evaluate"),
    "check": (".core.runs.check", "check"),
    "drift": (".core.runs.drift", "drift"),
    "load_model": (".models.loader", "load_model"),
    "mteb": (".core.mteb", None),  # the MTEB integration (the mteb extra); its import path is fasteval.core.mteb
    "PhysScoreEvaluator": (".core.runs.training", "PhysScoreEvaluator"),  # sentence-transformers (the train extra)
}

__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'fasteval' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = importlib.import_module(module, __name__)
    return value if attribute is None else getattr(value, attribute)


def __dir__():
    return sorted([*globals(), *_LAZY])
