"""fasteval: a fast and faithful evaluator of how text-embedding models measure physical quantities.

Reproduces the benchmark of "Embedding Models Measure in Peculiar Ways" (Opitz & Michail, arXiv 2609.20821).
Importing this package is cheap: numba, onnxruntime and torch load only when a computation needs them.
"""

__version__ = "0.1.0"
