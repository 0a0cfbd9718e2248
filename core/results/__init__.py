"""Results: the typed result (``model``), its files (``files``, ``mteb``), reading them back (``read``), and
the one staged writer with the strict-JSON / CSV / Markdown helpers (``io``)."""
from fasteval.core.results.io import (  # noqa: F401
    atomic_write_text, check_writable, csv_text, dumps, markdown_table, staged_folder, to_jsonable,
    write_result_folder,
)
from fasteval.core.results.model import RESULT_FILE, ModelResult  # noqa: F401
