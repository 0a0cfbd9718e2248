"""Results: the typed result (``model``), its files (``files``, ``mteb``) and reading them back (``read``).
The strict-JSON / CSV / Markdown helpers and the one staged writer are on the ground floor, ``core/io.py``."""
from .model import RESULT_FILE, ModelResult  # noqa: F401
