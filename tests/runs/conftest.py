"""Fixtures of the run tests: small OpenAI-compatible servers on 127.0.0.1 (tests/fakeserver.py), each with the
faults asked of it, stopped with the test."""
from __future__ import annotations

import pytest

from fakeserver import FakeServer, Faults


@pytest.fixture
def servers():
    made = []

    def make(**faults) -> FakeServer:
        server = FakeServer(faults=Faults(**faults))
        made.append(server)
        return server

    yield make
    for s in made:
        s.close()
