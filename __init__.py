"""fasteval: a fast and faithful evaluator of how text-embedding models measure physical quantities.

Reproduces the benchmark of "Embedding Models Measure in Peculiar Ways" (Opitz & Michail, arXiv 2609.20821).
Importing this package is cheap: numba, onnxruntime and torch load only when a computation needs them.
"""

__version__ = "0.1.0"

__all__ = ["check", "evaluate", "load_model", "mteb", "__version__"]


def __getattr__(name: str):
    # Lazy, so `import fasteval` (and `fasteval --help`) never pulls in numba, onnxruntime or torch.
    if name == "evaluate":
        from fasteval.core.runs.evaluate import evaluate

        return evaluate
    if name == "check":
        from fasteval.core.runs.check import check

        return check
    if name == "mteb":  # the MTEB integration (fasteval.mteb; the mteb extra)
        import importlib

        return importlib.import_module("fasteval.mteb")
    if name == "load_model":
        from fasteval.models.loader import load_model

        return load_model
    raise AttributeError(f"module 'fasteval' has no attribute {name!r}")
