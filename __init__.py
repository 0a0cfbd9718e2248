"""fasteval: a fast and faithful evaluator of how text-embedding models measure physical quantities.

Reproduces the benchmark of "Embedding Models Measure in Peculiar Ways" (Opitz & Michail, arXiv 2609.20821).
Importing this package is cheap: numba, onnxruntime and torch load only when a computation needs them.
"""

import importlib
import importlib.abc
import importlib.util
import logging
import sys

__version__ = "0.1.0"

# The library logs to the "fasteval" logger and prints nothing; the CLI installs the handler users see. A harness
# that embeds fasteval configures logging as it likes (the records propagate to its root logger).
logging.getLogger("fasteval").addHandler(logging.NullHandler())


class _PublicName(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``fasteval.mteb`` is the public name of ``fasteval.core.mteb``: importing either gives the one module (one
    file, one module object, so one ``MtebEncoder`` class). Nothing is loaded before the name is imported."""

    ALIASES = {"fasteval.mteb": "fasteval.core.mteb"}

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in self.ALIASES else None

    def create_module(self, spec):
        return importlib.import_module(self.ALIASES[spec.name])

    def exec_module(self, module) -> None:
        """The module ran when ``create_module`` imported it under its own name."""


if not any(isinstance(f, _PublicName) for f in sys.meta_path):
    sys.meta_path.append(_PublicName())

__all__ = ["check", "drift", "evaluate", "load_model", "mteb", "__version__"]


def __getattr__(name: str):
    # Lazy, so `import fasteval` (and `fasteval --help`) never pulls in numba, onnxruntime or torch.
    if name == "evaluate":
        from fasteval.core.runs.evaluate import evaluate

        return evaluate
    if name == "check":
        from fasteval.core.runs.check import check

        return check
    if name == "drift":
        from fasteval.core.runs.drift import drift

        return drift
    if name == "mteb":  # the MTEB integration (fasteval.mteb; the mteb extra)
        import importlib

        return importlib.import_module("fasteval.mteb")
    if name == "load_model":
        from fasteval.models.loader import load_model

        return load_model
    raise AttributeError(f"module 'fasteval' has no attribute {name!r}")
